//! The data parser v0.0.44 (slurmrestd 25.11), served beside v0.0.38
//! under `/slurm/v0.0.44/` and `/slurmdb/v0.0.44/`: the same requests to
//! the controller as v0.0.38's handlers, rendered in v0.0.44's shapes
//! (`render`, `db`). Requests in v0.0.44's form (`job_submit_req`,
//! `job_desc_msg` with `{"set", "infinite", "number"}` numbers) are turned
//! into v0.0.38's by [`normalize_job`] and taken by `crate::submit`, so
//! both versions accept and refuse the same properties.

pub mod db;
pub mod render;

use crate::api::{self, Call, Ctx, Resp, Route};
use crate::json::{obj, J};
use client::ClientError;
use proto::{CtldRequest, CtldResponse, Identity, SlurmError};
use serde_json::Value;

/// The routes of v0.0.44 (operation ids as slurmrestd's document names
/// them).
pub const ROUTES: &[Route] = &[
    route(
        "GET",
        "/slurm/v0.0.44/ping",
        "slurm_v0044_get_ping",
        "ping test",
        &[],
        "v0.0.44_openapi_ping_array_resp",
        ping,
    ),
    route(
        "GET",
        "/slurm/v0.0.44/diag",
        "slurm_v0044_get_diag",
        "get diagnostics",
        &[],
        "v0.0.44_openapi_diag_resp",
        diag,
    ),
    route(
        "GET",
        "/slurm/v0.0.44/jobs",
        "slurm_v0044_get_jobs",
        "get list of jobs",
        &[(
            "update_time",
            "Query jobs updated more recently than this time (UNIX timestamp)",
        )],
        "v0.0.44_openapi_job_info_resp",
        jobs,
    ),
    route(
        "GET",
        "/slurm/v0.0.44/job/{job_id}",
        "slurm_v0044_get_job",
        "get job info",
        &[],
        "v0.0.44_openapi_job_info_resp",
        job,
    ),
    route(
        "POST",
        "/slurm/v0.0.44/job/{job_id}",
        "slurm_v0044_post_job",
        "update job",
        &[],
        "v0.0.44_openapi_job_post_response",
        update,
    ),
    route(
        "DELETE",
        "/slurm/v0.0.44/job/{job_id}",
        "slurm_v0044_delete_job",
        "cancel or signal job",
        &[("signal", "Signal to send to Job")],
        "v0.0.44_openapi_kill_job_resp",
        cancel,
    ),
    route(
        "POST",
        "/slurm/v0.0.44/job/submit",
        "slurm_v0044_post_job_submit",
        "submit new job",
        &[],
        "v0.0.44_openapi_job_submit_response",
        submit,
    ),
    route(
        "GET",
        "/slurm/v0.0.44/nodes",
        "slurm_v0044_get_nodes",
        "get node(s) info",
        &[(
            "update_time",
            "Query jobs updated more recently than this time (UNIX timestamp)",
        )],
        "v0.0.44_openapi_nodes_resp",
        nodes,
    ),
    route(
        "GET",
        "/slurm/v0.0.44/node/{node_name}",
        "slurm_v0044_get_node",
        "get node info",
        &[],
        "v0.0.44_openapi_nodes_resp",
        node,
    ),
    route(
        "GET",
        "/slurm/v0.0.44/partitions",
        "slurm_v0044_get_partitions",
        "get all partition info",
        &[(
            "update_time",
            "Query partitions updated more recently than this time (UNIX timestamp)",
        )],
        "v0.0.44_openapi_partition_resp",
        partitions,
    ),
    route(
        "GET",
        "/slurm/v0.0.44/partition/{partition_name}",
        "slurm_v0044_get_partition",
        "get partition info",
        &[],
        "v0.0.44_openapi_partition_resp",
        partition,
    ),
    route(
        "GET",
        "/slurm/v0.0.44/reservations",
        "slurm_v0044_get_reservations",
        "get all reservation info",
        &[],
        "v0.0.44_openapi_reservation_resp",
        reservations,
    ),
    route(
        "GET",
        "/slurm/v0.0.44/reservation/{reservation_name}",
        "slurm_v0044_get_reservation",
        "get reservation info",
        &[],
        "v0.0.44_openapi_reservation_resp",
        reservation,
    ),
    route(
        "GET",
        "/slurm/v0.0.44/licenses",
        "slurm_v0044_get_licenses",
        "get all Slurm tracked license info",
        &[],
        "v0.0.44_openapi_licenses_resp",
        licenses,
    ),
    route(
        "GET",
        "/slurmdb/v0.0.44/jobs",
        "slurmdb_v0044_get_jobs",
        "Get job list",
        crate::dbquery::TAKEN,
        "v0.0.44_openapi_slurmdbd_jobs_resp",
        db_jobs,
    ),
    route(
        "GET",
        "/slurmdb/v0.0.44/job/{job_id}",
        "slurmdb_v0044_get_job",
        "Get job info",
        &[],
        "v0.0.44_openapi_slurmdbd_jobs_resp",
        db_job,
    ),
    route(
        "GET",
        "/slurmdb/v0.0.44/accounts",
        "slurmdb_v0044_get_accounts",
        "Get account list",
        &[],
        "v0.0.44_openapi_accounts_resp",
        db_accounts,
    ),
    route(
        "GET",
        "/slurmdb/v0.0.44/account/{account_name}",
        "slurmdb_v0044_get_account",
        "Get account info",
        &[],
        "v0.0.44_openapi_accounts_resp",
        db_account,
    ),
    route(
        "GET",
        "/slurmdb/v0.0.44/users",
        "slurmdb_v0044_get_users",
        "Get user list",
        &[],
        "v0.0.44_openapi_users_resp",
        db_users,
    ),
    route(
        "GET",
        "/slurmdb/v0.0.44/user/{name}",
        "slurmdb_v0044_get_user",
        "Get user info",
        &[],
        "v0.0.44_openapi_users_resp",
        db_user,
    ),
    route(
        "GET",
        "/slurmdb/v0.0.44/associations",
        "slurmdb_v0044_get_associations",
        "Get association list",
        crate::dbv0038::ASSOC_QUERY,
        "v0.0.44_openapi_assocs_resp",
        db_assocs,
    ),
    route(
        "GET",
        "/slurmdb/v0.0.44/qos",
        "slurmdb_v0044_get_qos",
        "Get QOS list",
        &[],
        "v0.0.44_openapi_slurmdbd_qos_resp",
        db_qos_list,
    ),
    route(
        "GET",
        "/slurmdb/v0.0.44/qos/{qos}",
        "slurmdb_v0044_get_single_qos",
        "Get QOS info",
        &[],
        "v0.0.44_openapi_slurmdbd_qos_resp",
        db_qos,
    ),
    route(
        "GET",
        "/slurmdb/v0.0.44/tres",
        "slurmdb_v0044_get_tres",
        "Get TRES info",
        &[],
        "v0.0.44_openapi_tres_resp",
        db_tres,
    ),
    route(
        "GET",
        "/slurmdb/v0.0.44/config",
        "slurmdb_v0044_get_config",
        "Dump all configuration information",
        &[],
        "v0.0.44_openapi_slurmdbd_config_resp",
        db_config,
    ),
    route(
        "GET",
        "/slurmdb/v0.0.44/diag",
        "slurmdb_v0044_get_diag",
        "Get slurmdb diagnostics",
        &[],
        "v0.0.44_openapi_slurmdbd_stats_resp",
        db_diag,
    ),
];

#[allow(clippy::too_many_arguments)]
const fn route(
    method: &'static str,
    path: &'static str,
    op: &'static str,
    summary: &'static str,
    query: &'static [(&'static str, &'static str)],
    schema: &'static str,
    handler: api::Handler,
) -> Route {
    Route {
        method,
        path,
        op,
        summary,
        query,
        schema,
        auth: true,
        handler,
    }
}

fn is_db(call: &Call) -> bool {
    call.path.starts_with("/slurmdb/")
}

fn ok(ctx: &Ctx, who: &Identity, call: &Call, result: Vec<(&str, J)>) -> Resp {
    Resp::json(
        200,
        &render::answer(render::meta(is_db(call), &ctx.cluster, who), result, vec![]),
    )
}

/// A refusal: status 500 with one error, and `result` (the empty lists
/// the answer's schema has) before it.
fn fail(
    ctx: &Ctx,
    who: &Identity,
    call: &Call,
    result: Vec<(&str, J)>,
    description: &str,
    number: i64,
    text: &str,
    source: &str,
) -> Resp {
    Resp::json(
        500,
        &render::answer(
            render::meta(is_db(call), &ctx.cluster, who),
            result,
            vec![render::error(description, number, text, source)],
        ),
    )
}

fn refused(ctx: &Ctx, who: &Identity, call: &Call, e: &ClientError, source: &str) -> Resp {
    let (number, text) = match e {
        ClientError::Refused(s) => (crate::v0038::errno(*s), s.as_slurm_str().to_string()),
        ClientError::Unreachable(_) => (
            1001,
            "Unable to contact slurm controller (connect failure)".to_string(),
        ),
        other => (-1, other.to_string()),
    };
    fail(ctx, who, call, vec![], &text, number, &text, source)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn stamps() -> Vec<(&'static str, J)> {
    vec![
        ("last_backfill", render::no_val(None)),
        ("last_update", render::time(Some(now()))),
    ]
}

fn ping(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let t0 = std::time::Instant::now();
    let up = ctx.call(who, CtldRequest::Ping).is_ok();
    let latency = u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX);
    ok(
        ctx,
        who,
        call,
        vec![(
            "pings",
            J::Arr(vec![render::ping(&ctx.ctld_host, up, latency)]),
        )],
    )
}

fn diag(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match ctx.call(who, CtldRequest::Diag { reset: false }) {
        Ok(CtldResponse::Diag(d)) => ok(ctx, who, call, vec![("statistics", render::diag(&d))]),
        Ok(_) => refused(
            ctx,
            who,
            call,
            &ClientError::Unexpected,
            "slurm_get_statistics",
        ),
        Err(e) => refused(ctx, who, call, &e, "slurm_get_statistics"),
    }
}

fn render_jobs(ctx: &Ctx, who: &Identity, jobs: &[proto::JobInfo]) -> J {
    let topo = api::topology(ctx, who, jobs);
    J::Arr(
        jobs.iter()
            .map(|j| render::job(j, &ctx.cluster, &topo))
            .collect(),
    )
}

fn jobs(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match api::job_listing(ctx, who, &ctx.jobs_v0044, render::job) {
        Ok(rendered) => {
            let mut result = vec![("jobs", J::Arr(rendered))];
            result.extend(stamps());
            ok(ctx, who, call, result)
        }
        Err(e) => refused(ctx, who, call, &e, "slurm_load_jobs"),
    }
}

fn job(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let id = call.param("job_id");
    let not_found = || {
        fail(
            ctx,
            who,
            call,
            vec![("jobs", J::Arr(vec![]))],
            &format!("Unable to query JobId={id}"),
            2017,
            SlurmError::InvalidJobId.as_slurm_str(),
            "_handle_job_get",
        )
    };
    let Ok(n) = id.parse::<u32>() else {
        return not_found();
    };
    let found = match api::jobs_of_id(ctx, who, n) {
        Ok(j) => j,
        Err(e) => return refused(ctx, who, call, &e, "slurm_load_job"),
    };
    if found.is_empty() {
        return not_found();
    }
    let mut result = vec![("jobs", render_jobs(ctx, who, &found))];
    result.extend(stamps());
    ok(ctx, who, call, result)
}

/// `job_desc_msg` in v0.0.44's form to v0.0.38's properties: numbers
/// given as `{"set", "infinite", "number"}` become plain (an unset or
/// unlimited one is left out), `minimum_nodes`/`maximum_nodes` become
/// `nodes`, and `script` is taken out (returned apart).
pub fn normalize_job(job: &Value) -> Result<(Value, Option<String>), String> {
    let Value::Object(fields) = job else {
        return Err("job: expected an object".into());
    };
    let mut out = serde_json::Map::new();
    let mut script = None;
    let (mut min_nodes, mut max_nodes) = (None, None);
    for (k, v) in fields {
        let v = match v {
            Value::Object(o) if o.contains_key("number") || o.contains_key("set") => {
                let set = o.get("set").and_then(Value::as_bool).unwrap_or(true);
                let infinite = o.get("infinite").and_then(Value::as_bool).unwrap_or(false);
                if !set || infinite {
                    continue;
                }
                o.get("number").cloned().unwrap_or(Value::Null)
            }
            other => other.clone(),
        };
        match k.as_str() {
            "script" => {
                script = Some(
                    v.as_str()
                        .ok_or("job.script: expected a string")?
                        .to_string(),
                )
            }
            "minimum_nodes" => min_nodes = v.as_u64(),
            "maximum_nodes" => max_nodes = v.as_u64(),
            _ => {
                out.insert(k.clone(), v);
            }
        }
    }
    match (min_nodes, max_nodes) {
        (None, None) => {}
        (Some(a), None) => {
            out.insert("nodes".into(), Value::from(a));
        }
        (a, Some(b)) => {
            out.insert(
                "nodes".into(),
                Value::from(format!("{}-{b}", a.unwrap_or(1))),
            );
        }
    }
    Ok((Value::Object(out), script))
}

fn submit(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let refuse = |why: &str, number: i64, text: &str| {
        fail(
            ctx,
            who,
            call,
            vec![],
            why,
            number,
            text,
            "slurm_submit_batch_job",
        )
    };
    let body: Value = match serde_json::from_slice(&call.body) {
        Ok(b) => b,
        Err(e) => {
            return refuse(
                &format!("Unable to parse the request body: {e}"),
                -1,
                "Unspecified error",
            )
        }
    };
    // muster has no heterogeneous jobs.
    if body.get("jobs").is_some() {
        let e = SlurmError::NotSupported;
        return refuse(
            "heterogeneous jobs (jobs) are not supported",
            crate::v0038::errno(e),
            e.as_slurm_str(),
        );
    }
    let job = body
        .get("job")
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    let (job, inner_script) = match normalize_job(&job) {
        Ok(x) => x,
        Err(why) => return refuse(&why, -1, "Unspecified error"),
    };
    let script = body
        .get("script")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or(inner_script);
    let mut wrapped = serde_json::Map::new();
    wrapped.insert("job".into(), job);
    if let Some(s) = script {
        wrapped.insert("script".into(), Value::from(s));
    }
    let mut desc = match crate::submit::job_desc(&Value::Object(wrapped)) {
        Ok(d) => d,
        Err(why) => return refuse(&why, -1, "Unspecified error"),
    };
    desc.uid = who.uid;
    desc.gid = who.gid;
    desc.user = who.user.clone();
    desc.submit_host = who.host.clone();
    match ctx.call(who, CtldRequest::Submit(Box::new(desc))) {
        Ok(CtldResponse::Submitted(r)) => ok(
            ctx,
            who,
            call,
            vec![
                (
                    "result",
                    obj(vec![
                        ("job_id", J::from(r.job_id.0)),
                        ("step_id", J::from("batch")),
                        ("error_code", J::Int(0)),
                        ("error", J::from("")),
                        ("job_submit_user_msg", J::from("")),
                    ]),
                ),
                ("job_id", J::from(r.job_id.0)),
                ("step_id", J::from("batch")),
                ("job_submit_user_msg", J::from("")),
            ],
        ),
        Ok(_) => refused(
            ctx,
            who,
            call,
            &ClientError::Unexpected,
            "slurm_submit_batch_job",
        ),
        Err(ClientError::Refused(e)) => {
            refuse(e.as_slurm_str(), crate::v0038::errno(e), e.as_slurm_str())
        }
        Err(e) => refused(ctx, who, call, &e, "slurm_submit_batch_job"),
    }
}

fn update(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let id = call.param("job_id");
    let refuse = |why: &str, number: i64, text: &str| {
        fail(
            ctx,
            who,
            call,
            vec![],
            why,
            number,
            text,
            "slurm_update_job",
        )
    };
    let Ok(n) = id.parse::<u32>() else {
        let e = SlurmError::InvalidJobId;
        return refuse(
            &format!("unable to parse job_id: {id}"),
            2017,
            e.as_slurm_str(),
        );
    };
    let body: Value = match serde_json::from_slice(&call.body) {
        Ok(b) => b,
        Err(e) => {
            return refuse(
                &format!("Unable to parse the request body: {e}"),
                -1,
                "Unspecified error",
            )
        }
    };
    let update = normalize_job(&body)
        .and_then(|(b, script)| match script {
            Some(_) => Err("script cannot be updated here".to_string()),
            None => Ok(b),
        })
        .and_then(|b| crate::submit::job_update(&b));
    let update = match update {
        Ok(u) => u,
        Err(why) => return refuse(&why, -1, "Unspecified error"),
    };
    let req = CtldRequest::UpdateJob {
        job_id: model::JobId(n),
        update,
        tasks: None,
    };
    match ctx.call(who, req) {
        Ok(_) => ok(
            ctx,
            who,
            call,
            vec![
                (
                    "results",
                    J::Arr(vec![obj(vec![
                        ("job_id", J::from(n)),
                        ("step_id", J::from("")),
                        ("error", J::from("")),
                        ("error_code", J::Int(0)),
                        ("why", J::from("")),
                    ])]),
                ),
                ("job_id", J::from(n.to_string())),
                ("step_id", J::from("")),
                ("job_submit_user_msg", J::from("")),
            ],
        ),
        Err(ClientError::Refused(e)) => {
            refuse(e.as_slurm_str(), crate::v0038::errno(e), e.as_slurm_str())
        }
        Err(e) => refused(ctx, who, call, &e, "slurm_update_job"),
    }
}

fn cancel(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let id = call.param("job_id");
    let refuse = |why: &str, number: i64, text: &str| {
        fail(ctx, who, call, vec![], why, number, text, "slurm_kill_job")
    };
    let Ok(n) = id.parse::<u32>() else {
        return refuse(
            &format!("unable to parse job_id: {id}"),
            2017,
            SlurmError::InvalidJobId.as_slurm_str(),
        );
    };
    let signal = match call.query("signal") {
        None => None,
        Some(s) => match api::parse_signal(s) {
            Some(9) => None,
            Some(sig) => Some(sig),
            None => {
                return refuse(
                    &format!("unable to parse signal: {s}"),
                    -1,
                    "Unspecified error",
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
    let entry = |code: i64, text: &str| {
        obj(vec![
            (
                "error",
                obj(vec![
                    ("string", J::from(text)),
                    ("code", J::Int(code)),
                    ("message", J::from(text)),
                ]),
            ),
            ("step_id", J::from("")),
            ("job_id", render::num(n)),
            ("federation", obj(vec![("sibling", J::from(""))])),
        ])
    };
    match ctx.call(who, req) {
        Ok(_) => ok(ctx, who, call, vec![("status", J::Arr(vec![entry(0, "")]))]),
        Err(ClientError::Refused(e)) => fail(
            ctx,
            who,
            call,
            vec![(
                "status",
                J::Arr(vec![entry(crate::v0038::errno(e), e.as_slurm_str())]),
            )],
            &format!("unable to kill job {n}: {}", e.as_slurm_str()),
            crate::v0038::errno(e),
            e.as_slurm_str(),
            "slurm_kill_job",
        ),
        Err(e) => refused(ctx, who, call, &e, "slurm_kill_job"),
    }
}

fn nodes(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match api::list_nodes(ctx, who) {
        Ok(n) => {
            let mut result = vec![(
                "nodes",
                J::Arr(n.iter().map(|n| render::node(n, &ctx.cluster)).collect()),
            )];
            result.push(("last_update", render::time(Some(now()))));
            ok(ctx, who, call, result)
        }
        Err(e) => refused(ctx, who, call, &e, "slurm_load_node"),
    }
}

fn node(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let name = call.param("node_name");
    match api::list_nodes(ctx, who) {
        Ok(n) => match n.iter().find(|n| n.name == name) {
            Some(n) => ok(
                ctx,
                who,
                call,
                vec![
                    ("nodes", J::Arr(vec![render::node(n, &ctx.cluster)])),
                    ("last_update", render::time(Some(now()))),
                ],
            ),
            None => {
                let e = SlurmError::InvalidNodeName;
                fail(
                    ctx,
                    who,
                    call,
                    vec![("nodes", J::Arr(vec![]))],
                    &format!("Invalid node name {name}"),
                    crate::v0038::errno(e),
                    e.as_slurm_str(),
                    "slurm_load_node_single",
                )
            }
        },
        Err(e) => refused(ctx, who, call, &e, "slurm_load_node_single"),
    }
}

fn partitions(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match api::list_partitions(ctx, who) {
        Ok(p) => ok(
            ctx,
            who,
            call,
            vec![
                (
                    "partitions",
                    J::Arr(
                        p.iter()
                            .map(|p| render::partition(p, &ctx.cluster))
                            .collect(),
                    ),
                ),
                ("last_update", render::time(Some(now()))),
            ],
        ),
        Err(e) => refused(ctx, who, call, &e, "slurm_load_partitions"),
    }
}

fn partition(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let name = call.param("partition_name");
    match api::list_partitions(ctx, who) {
        Ok(p) => match p.iter().find(|p| p.name == name) {
            Some(p) => ok(
                ctx,
                who,
                call,
                vec![
                    (
                        "partitions",
                        J::Arr(vec![render::partition(p, &ctx.cluster)]),
                    ),
                    ("last_update", render::time(Some(now()))),
                ],
            ),
            None => {
                let e = SlurmError::InvalidPartitionName;
                fail(
                    ctx,
                    who,
                    call,
                    vec![("partitions", J::Arr(vec![]))],
                    &format!("Unable to find partition {name}"),
                    crate::v0038::errno(e),
                    e.as_slurm_str(),
                    "slurm_load_partitions",
                )
            }
        },
        Err(e) => refused(ctx, who, call, &e, "slurm_load_partitions"),
    }
}

fn list_resv(ctx: &Ctx, who: &Identity) -> Result<Vec<proto::resv::ResvInfo>, ClientError> {
    match ctx.call(who, CtldRequest::ListReservations)? {
        CtldResponse::Reservations(list) => Ok(list),
        _ => Ok(Vec::new()),
    }
}

fn reservations(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match list_resv(ctx, who) {
        Ok(list) => ok(
            ctx,
            who,
            call,
            vec![
                (
                    "reservations",
                    J::Arr(list.iter().map(render::reservation).collect()),
                ),
                ("last_update", render::time(Some(now()))),
            ],
        ),
        Err(e) => refused(ctx, who, call, &e, "slurm_load_reservations"),
    }
}

fn reservation(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let name = call.param("reservation_name");
    match list_resv(ctx, who) {
        Ok(list) if list.iter().any(|r| r.name == name) => ok(
            ctx,
            who,
            call,
            vec![
                (
                    "reservations",
                    J::Arr(
                        list.iter()
                            .filter(|r| r.name == name)
                            .map(render::reservation)
                            .collect(),
                    ),
                ),
                ("last_update", render::time(Some(now()))),
            ],
        ),
        Ok(_) => fail(
            ctx,
            who,
            call,
            vec![("reservations", J::Arr(vec![]))],
            &format!("Unable to find reservation {name}"),
            -1,
            "Unspecified error",
            "slurm_load_reservations",
        ),
        Err(e) => refused(ctx, who, call, &e, "slurm_load_reservations"),
    }
}

fn licenses(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match ctx.call(who, CtldRequest::ListLicenses) {
        Ok(CtldResponse::Licenses(l)) => ok(
            ctx,
            who,
            call,
            vec![
                ("licenses", J::Arr(l.iter().map(render::license).collect())),
                ("last_update", render::time(Some(now()))),
            ],
        ),
        Ok(_) => refused(
            ctx,
            who,
            call,
            &ClientError::Unexpected,
            "slurm_load_licenses",
        ),
        Err(e) => refused(ctx, who, call, &e, "slurm_load_licenses"),
    }
}

fn db_render(
    ctx: &Ctx,
    who: &Identity,
    call: &Call,
    q: proto::AcctQuery,
    filter: &crate::dbquery::JobFilter,
) -> Resp {
    match api::acct_jobs(ctx, who, q, filter) {
        Ok(jobs) => {
            let rendered = jobs
                .iter()
                .map(|j| {
                    let killer = j.cancelled_by.map(api::user_name);
                    db::job(j, &api::group_name(j.gid), killer.as_deref())
                })
                .collect();
            ok(ctx, who, call, vec![("jobs", J::Arr(rendered))])
        }
        Err(e) => refused(ctx, who, call, &e, "slurmdb_jobs_get"),
    }
}

fn db_jobs(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match crate::dbquery::parse(&call.query) {
        Ok((q, filter)) => db_render(ctx, who, call, q, &filter),
        Err(why) => fail(
            ctx,
            who,
            call,
            vec![("jobs", J::Arr(vec![]))],
            &why,
            -1,
            "Unspecified error",
            "_parse_job_cond",
        ),
    }
}

fn db_job(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let id = call.param("job_id");
    let Ok(n) = id.parse::<u32>() else {
        return fail(
            ctx,
            who,
            call,
            vec![("jobs", J::Arr(vec![]))],
            &format!("Invalid job id: {id}"),
            -1,
            "Unspecified error",
            "_dump_jobs",
        );
    };
    let q = proto::AcctQuery {
        job_ids: vec![n],
        ..Default::default()
    };
    db_render(ctx, who, call, q, &Default::default())
}

fn with_tables(
    ctx: &Ctx,
    who: &Identity,
    call: &Call,
    source: &str,
    f: impl FnOnce(&proto::acctdb::AcctTables) -> Result<Vec<(&'static str, J)>, Resp>,
) -> Resp {
    match crate::dbv0038::tables(ctx, who) {
        Ok(t) => match f(&t) {
            Ok(result) => ok(ctx, who, call, result),
            Err(resp) => resp,
        },
        Err(e) => refused(ctx, who, call, &e, source),
    }
}

fn missing(ctx: &Ctx, who: &Identity, call: &Call, key: &'static str, what: &str) -> Resp {
    fail(
        ctx,
        who,
        call,
        vec![(key, J::Arr(vec![]))],
        &format!("Unable to find {what}"),
        -1,
        "Unspecified error",
        "slurmdb_get",
    )
}

fn db_accounts(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    with_tables(ctx, who, call, "slurmdb_accounts_get", |t| {
        Ok(vec![(
            "accounts",
            J::Arr(t.accounts.iter().map(|a| db::account(t, a)).collect()),
        )])
    })
}

fn db_account(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let name = call.param("account_name");
    with_tables(ctx, who, call, "slurmdb_accounts_get", |t| {
        match t
            .accounts
            .iter()
            .find(|a| a.name.eq_ignore_ascii_case(name))
        {
            Some(a) => Ok(vec![("accounts", J::Arr(vec![db::account(t, a)]))]),
            None => Err(missing(
                ctx,
                who,
                call,
                "accounts",
                &format!("account {name}"),
            )),
        }
    })
}

fn db_users(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    with_tables(ctx, who, call, "slurmdb_users_get", |t| {
        Ok(vec![(
            "users",
            J::Arr(t.users.iter().map(|u| db::user(t, u)).collect()),
        )])
    })
}

fn db_user(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let name = call.param("name");
    with_tables(ctx, who, call, "slurmdb_users_get", |t| {
        match t.users.iter().find(|u| u.name == name) {
            Some(u) => Ok(vec![("users", J::Arr(vec![db::user(t, u)]))]),
            None => Err(missing(ctx, who, call, "users", &format!("user {name}"))),
        }
    })
}

fn db_assocs(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    with_tables(
        ctx,
        who,
        call,
        "slurmdb_associations_get",
        |t| match crate::dbv0038::select_assocs(t, call) {
            Ok(list) => Ok(vec![(
                "associations",
                J::Arr(list.into_iter().map(db::assoc).collect()),
            )]),
            Err(why) => Err(fail(
                ctx,
                who,
                call,
                vec![("associations", J::Arr(vec![]))],
                &why,
                -1,
                "Unspecified error",
                "_parse_assoc_cond",
            )),
        },
    )
}

fn db_qos_list(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    with_tables(ctx, who, call, "slurmdb_qos_get", |t| {
        Ok(vec![("qos", J::Arr(t.qos.iter().map(db::qos).collect()))])
    })
}

fn db_qos(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let name = call.param("qos");
    with_tables(ctx, who, call, "slurmdb_qos_get", |t| {
        match t.qos_named(name) {
            Some(q) => Ok(vec![("qos", J::Arr(vec![db::qos(q)]))]),
            None => Err(missing(ctx, who, call, "qos", &format!("QOS {name}"))),
        }
    })
}

fn db_tres(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let gres = crate::dbv0038::gres_names(ctx, who);
    ok(
        ctx,
        who,
        call,
        vec![("TRES", crate::dbv0038::tres_catalog(&gres))],
    )
}

fn db_config(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    let gres = crate::dbv0038::gres_names(ctx, who);
    with_tables(ctx, who, call, "slurmdb_config_get", |t| {
        Ok(config_result(t, &ctx.cluster, &gres))
    })
}

/// `openapi_slurmdbd_config_resp`'s lists.
fn config_result(
    t: &proto::acctdb::AcctTables,
    cluster: &str,
    gres: &[String],
) -> Vec<(&'static str, J)> {
    let clusters: Vec<J> = if t.clusters.is_empty() {
        vec![obj(vec![("name", J::from(cluster))])]
    } else {
        t.clusters
            .iter()
            .map(|c| obj(vec![("name", J::from(&c.name))]))
            .collect()
    };
    vec![
        ("clusters", J::Arr(clusters)),
        ("tres", crate::dbv0038::tres_catalog(gres)),
        (
            "accounts",
            J::Arr(t.accounts.iter().map(|a| db::account(t, a)).collect()),
        ),
        (
            "users",
            J::Arr(t.users.iter().map(|u| db::user(t, u)).collect()),
        ),
        ("qos", J::Arr(t.qos.iter().map(db::qos).collect())),
        ("wckeys", J::Arr(vec![])),
        (
            "associations",
            J::Arr(t.assocs.iter().map(db::assoc).collect()),
        ),
        ("instances", J::Arr(vec![])),
    ]
}

fn db_diag(ctx: &Ctx, who: &Identity, call: &Call) -> Resp {
    match ctx.call(who, CtldRequest::Diag { reset: false }) {
        Ok(CtldResponse::Diag(d)) => ok(
            ctx,
            who,
            call,
            vec![("statistics", db::diag(d.req_time_start))],
        ),
        Ok(_) => refused(ctx, who, call, &ClientError::Unexpected, "slurmdb_diag"),
        Err(e) => refused(ctx, who, call, &e, "slurmdb_diag"),
    }
}

/// Examples of every v0.0.44 answer, by schema name, for the document:
/// each with every optional part present (a running job with its
/// resources, a signalled exit, an error and the result lists).
pub fn examples() -> Vec<(&'static str, J)> {
    let who = Identity {
        uid: 1000,
        gid: 1000,
        user: "user".into(),
        host: "host".into(),
    };
    let meta = |db: bool| render::meta(db, "cluster", &who);
    let err = vec![render::error("description", -1, "error", "source")];
    let with =
        |db: bool, result: Vec<(&'static str, J)>| render::answer(meta(db), result, err.clone());
    let running = proto::JobInfo {
        state: model::JobState::Running,
        start_time: Some(1),
        nodes: vec!["node1".into()],
        cpus_per_node: vec![1],
        cpu_ids_per_node: vec![vec![0]],
        array_task_id: Some(1),
        ntasks_per_node: Some(1),
        mem_per_node: Some(1),
        mem_per_cpu: Some(1),
        time_min: Some(model::TimeLimit::Minutes(1)),
        ..proto::JobInfo::default()
    };
    let ended = proto::JobInfo {
        state: model::JobState::Failed,
        exit_code: model::ExitCode { code: 1, signal: 9 },
        ..proto::JobInfo::default()
    };
    let jobs = J::Arr(vec![
        render::job(&running, "cluster", &[]),
        render::job(&ended, "cluster", &[]),
    ]);
    let stamps = || {
        vec![
            ("last_backfill", render::no_val(Some(1))),
            ("last_update", render::no_val(Some(1))),
        ]
    };
    let mut jobs_result = vec![("jobs", jobs)];
    jobs_result.extend(stamps());
    let t = crate::dbv0038::example_tables();
    let mut acct = crate::openapi::example_acct_job();
    acct.array_task_id = Some(1);
    let db_jobs = J::Arr(vec![db::job(&acct, "group", Some("root"))]);
    let resv = proto::resv::ResvInfo {
        name: "maint".into(),
        start: 1,
        end: 2,
        nodes: "node1".into(),
        node_cnt: 1,
        core_cnt: 1,
        cpu_cnt: 1,
        partition: Some("debug".into()),
        flags: "MAINT".into(),
        users: "root".into(),
        accounts: "(null)".into(),
        active: true,
    };
    let diag = proto::diag::DiagStats {
        rpc_by_type: vec![Default::default()],
        rpc_by_user: vec![Default::default()],
        ..Default::default()
    };
    vec![
        ("v0.0.44_openapi_resp", with(false, vec![])),
        (
            "v0.0.44_openapi_ping_array_resp",
            with(
                false,
                vec![("pings", J::Arr(vec![render::ping("ctl", true, 1)]))],
            ),
        ),
        (
            "v0.0.44_openapi_diag_resp",
            with(false, vec![("statistics", render::diag(&diag))]),
        ),
        ("v0.0.44_openapi_job_info_resp", with(false, jobs_result)),
        (
            "v0.0.44_openapi_job_post_response",
            with(
                false,
                vec![
                    (
                        "results",
                        J::Arr(vec![obj(vec![
                            ("job_id", J::Int(1)),
                            ("step_id", J::from("")),
                            ("error", J::from("")),
                            ("error_code", J::Int(0)),
                            ("why", J::from("")),
                        ])]),
                    ),
                    ("job_id", J::from("1")),
                    ("step_id", J::from("")),
                    ("job_submit_user_msg", J::from("")),
                ],
            ),
        ),
        (
            "v0.0.44_openapi_kill_job_resp",
            with(
                false,
                vec![(
                    "status",
                    J::Arr(vec![obj(vec![
                        (
                            "error",
                            obj(vec![
                                ("string", J::from("")),
                                ("code", J::Int(0)),
                                ("message", J::from("")),
                            ]),
                        ),
                        ("step_id", J::from("")),
                        ("job_id", render::num(1)),
                        ("federation", obj(vec![("sibling", J::from(""))])),
                    ])]),
                )],
            ),
        ),
        (
            "v0.0.44_openapi_job_submit_response",
            with(
                false,
                vec![
                    (
                        "result",
                        obj(vec![
                            ("job_id", J::Int(1)),
                            ("step_id", J::from("batch")),
                            ("error_code", J::Int(0)),
                            ("error", J::from("")),
                            ("job_submit_user_msg", J::from("")),
                        ]),
                    ),
                    ("job_id", J::Int(1)),
                    ("step_id", J::from("batch")),
                    ("job_submit_user_msg", J::from("")),
                ],
            ),
        ),
        (
            "v0.0.44_openapi_nodes_resp",
            with(
                false,
                vec![
                    (
                        "nodes",
                        J::Arr(vec![render::node(
                            &crate::openapi::example_node(),
                            "cluster",
                        )]),
                    ),
                    ("last_update", render::no_val(Some(1))),
                ],
            ),
        ),
        (
            "v0.0.44_openapi_partition_resp",
            with(
                false,
                vec![
                    (
                        "partitions",
                        J::Arr(vec![render::partition(
                            &crate::openapi::example_partition(),
                            "cluster",
                        )]),
                    ),
                    ("last_update", render::no_val(Some(1))),
                ],
            ),
        ),
        (
            "v0.0.44_openapi_reservation_resp",
            with(
                false,
                vec![
                    ("reservations", J::Arr(vec![render::reservation(&resv)])),
                    ("last_update", render::no_val(Some(1))),
                ],
            ),
        ),
        (
            "v0.0.44_openapi_licenses_resp",
            with(
                false,
                vec![
                    (
                        "licenses",
                        J::Arr(vec![render::license(&proto::LicenseInfo::default())]),
                    ),
                    ("last_update", render::no_val(Some(1))),
                ],
            ),
        ),
        (
            "v0.0.44_openapi_slurmdbd_jobs_resp",
            with(true, vec![("jobs", db_jobs)]),
        ),
        (
            "v0.0.44_openapi_accounts_resp",
            with(
                true,
                vec![("accounts", J::Arr(vec![db::account(&t, &t.accounts[0])]))],
            ),
        ),
        (
            "v0.0.44_openapi_users_resp",
            with(
                true,
                vec![("users", J::Arr(vec![db::user(&t, &t.users[0])]))],
            ),
        ),
        (
            "v0.0.44_openapi_assocs_resp",
            with(
                true,
                vec![("associations", J::Arr(vec![db::assoc(&t.assocs[0])]))],
            ),
        ),
        (
            "v0.0.44_openapi_slurmdbd_qos_resp",
            with(true, vec![("qos", J::Arr(vec![db::qos(&t.qos[0])]))]),
        ),
        (
            "v0.0.44_openapi_tres_resp",
            with(
                true,
                vec![("TRES", crate::dbv0038::tres_catalog(&["gpu".into()]))],
            ),
        ),
        (
            "v0.0.44_openapi_slurmdbd_config_resp",
            with(true, config_result(&t, "cluster", &["gpu".into()])),
        ),
        (
            "v0.0.44_openapi_slurmdbd_stats_resp",
            with(true, vec![("statistics", db::diag(0))]),
        ),
    ]
}

#[cfg(test)]
mod tests;
