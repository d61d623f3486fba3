//! `GET /openapi/v3`: the OpenAPI 3.0 document, generated from the route
//! table (`api::ROUTES`: paths, methods, operation ids, parameters) and, for
//! the schemas of the answers, from what the renderers (`v0038`) write for
//! an example of each thing, so a field added to a renderer is in the
//! document without another edit.

use crate::api::all_routes;
use crate::json::{obj, strs, J};
use crate::v0038;

/// The schema of a value as the renderers write it.
fn schema_of(v: &J) -> J {
    match v {
        J::Null => obj(vec![("nullable", J::Bool(true))]),
        J::Bool(_) => obj(vec![("type", J::from("boolean"))]),
        J::Int(_) => obj(vec![("type", J::from("integer"))]),
        J::Float(_) => obj(vec![("type", J::from("number"))]),
        J::Str(_) => obj(vec![("type", J::from("string"))]),
        // Only listings hold these, never the examples the schemas come from.
        J::Raw(_) => obj(vec![("type", J::from("object"))]),
        J::Arr(items) => obj(vec![
            ("type", J::from("array")),
            ("items", items_schema(items)),
        ]),
        J::Obj(pairs) => obj(vec![
            ("type", J::from("object")),
            (
                "properties",
                J::Obj(
                    pairs
                        .iter()
                        .map(|(k, v)| (k.clone(), schema_of(v)))
                        .collect(),
                ),
            ),
        ]),
    }
}

/// The schema of an array's items: the first item's, with the properties
/// of the other items (objects of several shapes, as `errors`) added.
fn items_schema(items: &[J]) -> J {
    let Some(first) = items.first() else {
        return obj(Vec::<(&str, J)>::new());
    };
    let mut schema = schema_of(first);
    for item in &items[1..] {
        if let (J::Obj(pairs), Some(J::Obj(props))) = (item, schema_props(&mut schema)) {
            for (k, v) in pairs {
                if !props.iter().any(|(p, _)| p == k) {
                    props.push((k.clone(), schema_of(v)));
                }
            }
        }
    }
    schema
}

fn schema_props(schema: &mut J) -> Option<&mut J> {
    match schema {
        J::Obj(pairs) => pairs
            .iter_mut()
            .find(|(k, _)| k == "properties")
            .map(|(_, v)| v),
        _ => None,
    }
}

/// An example of each answer, by schema name: what the handlers write.
pub fn examples() -> Vec<(&'static str, J)> {
    // Running, so that its `job_resources` are in the schema too.
    let running = proto::JobInfo {
        state: model::JobState::Running,
        start_time: Some(1),
        nodes: vec!["node1".into()],
        cpus_per_node: vec![1],
        cpu_ids_per_node: vec![vec![0]],
        ..proto::JobInfo::default()
    };
    let job = v0038::job(&running, "cluster", &[]);
    let err = v0038::error("description", -1, "error", "source");
    vec![
        (
            "v0.0.38_errors",
            v0038::answer(
                false,
                vec![
                    err.clone(),
                    v0038::submit_error(proto::SlurmError::InvalidJobId),
                ],
                vec![],
            ),
        ),
        (
            "v0.0.38_pings",
            v0038::answer(
                false,
                vec![],
                vec![("pings", J::Arr(vec![v0038::ping("ctl", true)]))],
            ),
        ),
        (
            "v0.0.38_jobs_response",
            v0038::answer(false, vec![], vec![("jobs", J::Arr(vec![job]))]),
        ),
        (
            "v0.0.38_job_submission_response",
            v0038::answer(
                false,
                vec![],
                vec![
                    ("job_id", J::Int(1)),
                    ("step_id", J::from("BATCH")),
                    ("job_submit_user_msg", J::from("")),
                ],
            ),
        ),
        (
            "v0.0.38_nodes_response",
            v0038::answer(
                false,
                vec![],
                vec![("nodes", J::Arr(vec![v0038::node(&example_node())]))],
            ),
        ),
        (
            "v0.0.38_partitions_response",
            v0038::answer(
                false,
                vec![],
                vec![(
                    "partitions",
                    J::Arr(vec![v0038::partition(&example_partition())]),
                )],
            ),
        ),
        (
            "v0.0.38_diag",
            v0038::answer(
                false,
                vec![],
                vec![(
                    "statistics",
                    v0038::diag(&proto::diag::DiagStats::default()),
                )],
            ),
        ),
        (
            "dbv0.0.38_job_info",
            v0038::answer(
                true,
                vec![],
                vec![(
                    "jobs",
                    J::Arr(vec![v0038::db_job(&example_acct_job(), "group", None)]),
                )],
            ),
        ),
        (
            "v0.0.38_reservations_response",
            v0038::answer(
                false,
                vec![],
                vec![(
                    "reservations",
                    J::Arr(vec![v0038::reservation(&proto::resv::ResvInfo {
                        name: "maint".into(),
                        start: 0,
                        end: 0,
                        nodes: "node1".into(),
                        node_cnt: 1,
                        core_cnt: 1,
                        cpu_cnt: 1,
                        partition: Some("debug".into()),
                        flags: "MAINT".into(),
                        users: "root".into(),
                        accounts: "(null)".into(),
                        active: true,
                    })]),
                )],
            ),
        ),
        (
            "v0.0.38_licenses",
            v0038::answer(
                false,
                vec![],
                vec![(
                    "licenses",
                    J::Arr(vec![v0038::license(&proto::LicenseInfo::default())]),
                )],
            ),
        ),
    ]
}

/// An accounting record with a step, for the document's schema.
pub fn example_acct_job() -> proto::AcctJob {
    proto::AcctJob {
        cluster: "cluster".into(),
        job_id: model::JobId(1),
        array_job_id: None,
        array_task_id: None,
        array_task_str: None,
        name: "job".into(),
        user: "user".into(),
        uid: 1000,
        gid: 1000,
        account: "account".into(),
        qos: "normal".into(),
        partition: "debug".into(),
        state: model::JobState::Completed,
        cancelled_by: None,
        reason: "None".into(),
        // Signaled, so that `exit_code.signal` is in the schema.
        exit_code: model::ExitCode { code: 0, signal: 9 },
        priority: 1,
        submit_time: 0,
        eligible_time: Some(0),
        start_time: Some(0),
        end_time: Some(1),
        time_limit: model::TimeLimit::Minutes(1),
        nodes: "node1".into(),
        n_nodes: 1,
        n_cpus: 1,
        req_mem: "500M".into(),
        req_tres: "cpu=1,mem=500M,node=1,billing=1".into(),
        alloc_tres: "cpu=1,mem=500M,node=1,billing=1".into(),
        work_dir: "/".into(),
        submit_line: String::new(),
        comment: None,
        suspended_secs: 0,
        steps: vec![proto::AcctStep {
            step: proto::StepId::Batch,
            name: "batch".into(),
            state: model::JobState::Completed,
            exit_code: model::ExitCode {
                code: 0,
                signal: 15,
            },
            start_time: Some(0),
            end_time: Some(1),
            nodes: "node1".into(),
            n_nodes: 1,
            n_cpus: 1,
            n_tasks: 1,
            alloc_tres: "cpu=1,mem=500M,node=1".into(),
            usage: proto::StepUsage::default(),
            container: Some("/images/app.sqsh".into()),
        }],
        container: Some("/images/app.sqsh".into()),
    }
}

/// A node with every field set, for the document's schema.
pub fn example_node() -> proto::NodeInfo {
    proto::NodeInfo {
        name: "node1".into(),
        addr: "node1".into(),
        hostname: "node1".into(),
        port: 6818,
        state: model::NodeState::new(model::NodeBase::Idle),
        cpus: 2,
        boards: 1,
        sockets: 2,
        cores_per_socket: 1,
        threads_per_core: 1,
        real_memory: 4000,
        tmp_disk: 0,
        weight: 1,
        alloc_cpus: 0,
        alloc_mem: 0,
        free_mem: Some(1),
        cpu_load: Some(0.0),
        gres: vec![],
        gres_used: vec![],
        features: vec![],
        partitions: vec!["debug".into()],
        reason: None,
        reason_user: None,
        reason_time: None,
        boot_time: Some(0),
        slurmd_start_time: Some(0),
        last_busy: Some(0),
        version: Some(v0038::SLURM_RELEASE.into()),
        os: Some("Linux".into()),
        arch: Some("x86_64".into()),
        resv: 0,
        reboot_issued: false,
        next_state: None,
    }
}

/// A partition with every field set, for the document's schema.
pub fn example_partition() -> proto::PartitionInfo {
    proto::PartitionInfo {
        name: "debug".into(),
        default: true,
        nodes: vec!["node1".into()],
        state: "UP".into(),
        max_time: model::TimeLimit::Unlimited,
        default_time: None,
        max_nodes: None,
        min_nodes: 0,
        priority_tier: 1,
        priority_job_factor: 1,
        oversubscribe: "NO".into(),
        allow_accounts: None,
        allow_groups: None,
        def_mem_per_cpu: None,
        max_mem_per_node: None,
        total_cpus: 2,
        total_nodes: 1,
        tres: "cpu=2,mem=4000M,node=1,billing=2".into(),
        access: vec![],
    }
}

fn path_params(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|p| p.strip_prefix('{').and_then(|p| p.strip_suffix('}')))
        .collect()
}

/// The whole document.
pub fn document() -> J {
    let mut paths: Vec<(String, J)> = Vec::new();
    for r in all_routes() {
        let mut params: Vec<J> = path_params(r.path)
            .into_iter()
            .map(|name| {
                obj(vec![
                    ("name", J::from(name)),
                    ("in", J::from("path")),
                    ("required", J::Bool(true)),
                    ("schema", obj(vec![("type", J::from("string"))])),
                ])
            })
            .collect();
        for (name, description) in r.query {
            params.push(obj(vec![
                ("name", J::from(*name)),
                ("in", J::from("query")),
                ("description", J::from(*description)),
                ("required", J::Bool(false)),
                ("schema", obj(vec![("type", J::from("string"))])),
            ]));
        }
        let streamed = r.op == crate::watch::OP;
        if streamed {
            params.push(obj(vec![
                ("name", J::from("Last-Event-ID")),
                ("in", J::from("header")),
                (
                    "description",
                    J::from("Resume after this event id (EPOCH.SEQ, as the stream's id: lines)"),
                ),
                ("required", J::Bool(false)),
                ("schema", obj(vec![("type", J::from("string"))])),
            ]));
        }
        let ok = if r.schema.is_empty() {
            obj(vec![("description", J::from(r.summary))])
        } else {
            obj(vec![
                ("description", J::from(r.summary)),
                (
                    "content",
                    obj(vec![(
                        // A stream's events each carry one JSON document
                        // of the schema on their `data:` line.
                        if streamed {
                            "text/event-stream"
                        } else {
                            "application/json"
                        },
                        obj(vec![(
                            "schema",
                            obj(vec![(
                                "$ref",
                                J::from(format!("#/components/schemas/{}", r.schema)),
                            )]),
                        )]),
                    )]),
                ),
            ])
        };
        let mut op = obj(vec![
            (
                "tags",
                strs(&[if r.path.starts_with("/slurm/") {
                    "slurm"
                } else if r.path.starts_with("/slurmdb/") {
                    "slurmdb"
                } else if r.path.starts_with("/muster/") {
                    "muster"
                } else {
                    "openapi"
                }]),
            ),
            ("operationId", J::from(r.op)),
            ("summary", J::from(r.summary)),
            ("parameters", J::Arr(params)),
        ]);
        if r.method == "POST" {
            let body = match (
                r.path.starts_with("/slurm/v0.0.44/"),
                r.path.ends_with("/submit"),
            ) {
                (false, true) => "v0.0.38_job_submission",
                (false, false) => "v0.0.38_job_properties",
                (true, true) => "v0.0.44_job_submit_req",
                (true, false) => "v0.0.44_job_desc_msg",
            };
            op.push(
                "requestBody",
                obj(vec![
                    ("required", J::Bool(true)),
                    (
                        "content",
                        obj(vec![(
                            "application/json",
                            obj(vec![(
                                "schema",
                                obj(vec![(
                                    "$ref",
                                    J::from(format!("#/components/schemas/{body}")),
                                )]),
                            )]),
                        )]),
                    ),
                ]),
            );
        }
        op.push(
            "responses",
            obj(vec![
                ("200", ok),
                (
                    "default",
                    obj(vec![
                        ("description", J::from("an error")),
                        (
                            "content",
                            obj(vec![(
                                "application/json",
                                obj(vec![(
                                    "schema",
                                    obj(vec![(
                                        "$ref",
                                        J::from(format!(
                                            "#/components/schemas/{}",
                                            error_schema(r.path)
                                        )),
                                    )]),
                                )]),
                            )]),
                        ),
                    ]),
                ),
            ]),
        );
        let method = r.method.to_ascii_lowercase();
        match paths.iter_mut().find(|(p, _)| p == r.path) {
            Some((_, item)) => item.push(&method, op),
            None => paths.push((r.path.to_string(), J::Obj(vec![(method, op)]))),
        }
    }
    let mut schemas: Vec<(String, J)> = examples()
        .into_iter()
        .chain(crate::dbv0038::examples())
        .chain(crate::v0044::examples())
        .map(|(name, v)| (name.to_string(), schema_of(&v)))
        .collect();
    // Both kinds of event in one schema: `kind` says which fields are set.
    schemas.push((
        "muster_v1_watch_event".into(),
        items_schema(&crate::watch::examples()),
    ));
    let submission_props: Vec<(String, J)> = crate::submit::TAKEN
        .iter()
        .map(|k| (k.to_string(), obj(Vec::<(&str, J)>::new())))
        .collect();
    let mut update_props: Vec<(String, J)> = crate::submit::UPDATABLE
        .iter()
        .map(|k| (k.to_string(), obj(Vec::<(&str, J)>::new())))
        .collect();
    update_props.sort_by(|a, b| a.0.cmp(&b.0));
    schemas.push((
        "v0.0.38_job_properties".into(),
        obj(vec![
            ("type", J::from("object")),
            ("properties", J::Obj(update_props)),
        ]),
    ));
    schemas.push((
        "v0.0.38_job_submission".into(),
        obj(vec![
            ("required", strs(&["script"])),
            (
                "properties",
                obj(vec![
                    ("script", obj(vec![("type", J::from("string"))])),
                    (
                        "job",
                        obj(vec![
                            ("type", J::from("object")),
                            ("properties", J::Obj(submission_props.clone())),
                        ]),
                    ),
                ]),
            ),
        ]),
    ));
    schemas.extend(v0044_requests(&submission_props));
    obj(vec![
        ("openapi", J::from("3.0.2")),
        (
            "info",
            obj(vec![
                ("title", J::from("Slurm Rest API (muster)")),
                ("description", J::from("API to access and control Slurm.")),
                ("version", J::from("0.0.38")),
            ]),
        ),
        ("paths", J::Obj(paths)),
        ("components", obj(vec![("schemas", J::Obj(schemas))])),
    ])
}

/// The schema of a route's refusals: v0.0.38's errors, or v0.0.44's
/// plain answer (`meta`, `errors`, `warnings`).
fn error_schema(path: &str) -> &'static str {
    if path.contains("/v0.0.44/") {
        "v0.0.44_openapi_resp"
    } else {
        "v0.0.38_errors"
    }
}

/// v0.0.44's request bodies: `job_desc_msg` (the properties v0.0.38
/// takes, each a number, string or `{"set", "infinite", "number"}`), and
/// `job_submit_req` (`script` and `job`; `jobs`, heterogeneous, is
/// refused).
fn v0044_requests(taken: &[(String, J)]) -> Vec<(String, J)> {
    let mut props: Vec<(String, J)> = taken.to_vec();
    props.push(("script".into(), obj(vec![("type", J::from("string"))])));
    props.push(("minimum_nodes".into(), obj(Vec::<(&str, J)>::new())));
    props.push(("maximum_nodes".into(), obj(Vec::<(&str, J)>::new())));
    props.sort_by(|a, b| a.0.cmp(&b.0));
    vec![
        (
            "v0.0.44_job_desc_msg".into(),
            obj(vec![
                ("type", J::from("object")),
                ("properties", J::Obj(props)),
            ]),
        ),
        (
            "v0.0.44_job_submit_req".into(),
            obj(vec![
                ("type", J::from("object")),
                (
                    "properties",
                    obj(vec![
                        ("script", obj(vec![("type", J::from("string"))])),
                        (
                            "job",
                            obj(vec![(
                                "$ref",
                                J::from("#/components/schemas/v0.0.44_job_desc_msg"),
                            )]),
                        ),
                        (
                            "jobs",
                            obj(vec![
                                ("type", J::from("array")),
                                (
                                    "items",
                                    obj(vec![(
                                        "$ref",
                                        J::from("#/components/schemas/v0.0.44_job_desc_msg"),
                                    )]),
                                ),
                            ]),
                        ),
                    ]),
                ),
            ]),
        ),
    ]
}

/// Checks `value` against the schema `name` of `doc` (a served document):
/// types, and that an object has no property the schema lacks. Enough to
/// catch a handler writing what the document does not say; `Err` names
/// the first place that differs.
pub fn validate(
    doc: &serde_json::Value,
    name: &str,
    value: &serde_json::Value,
) -> Result<(), String> {
    let schema = &doc["components"]["schemas"][name];
    if schema.is_null() {
        return Err(format!("no schema {name}"));
    }
    check(doc, schema, value, name)
}

fn check(
    doc: &serde_json::Value,
    schema: &serde_json::Value,
    v: &serde_json::Value,
    at: &str,
) -> Result<(), String> {
    use serde_json::Value;
    if v.is_null() {
        return Ok(());
    }
    // `{"$ref": "#/components/schemas/NAME"}`: that schema of `doc`.
    if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
        let resolved = target
            .strip_prefix("#/")
            .map(|p| p.split('/').fold(doc, |node, part| &node[part]))
            .filter(|s| !s.is_null())
            .ok_or_else(|| format!("{at}: unresolved {target}"))?;
        return check(doc, resolved, v, at);
    }
    let ok = match schema.get("type").and_then(Value::as_str) {
        None => true,
        Some("object") => v.is_object(),
        Some("array") => v.is_array(),
        Some("string") => v.is_string(),
        Some("integer") => v.is_i64() || v.is_u64(),
        Some("number") => v.is_number(),
        Some("boolean") => v.is_boolean(),
        Some(_) => true,
    };
    if !ok {
        return Err(format!("{at}: {v} is not of type {}", schema["type"]));
    }
    if let (Some(props), Some(obj)) = (
        schema.get("properties").and_then(Value::as_object),
        v.as_object(),
    ) {
        // Keys that are numbers (a node's sockets and cores) are data.
        for (k, x) in obj {
            match props.get(k) {
                Some(s) => check(doc, s, x, &format!("{at}.{k}"))?,
                None if k.parse::<u32>().is_ok() => {}
                None => return Err(format!("{at}: {k} is not in the document")),
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            check(doc, items, x, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

/// The schema `route`'s answers follow, by method and path.
pub fn schema_for(method: &str, path: &str) -> Option<&'static str> {
    crate::api::find(method, path)
        .ok()
        .map(|(r, _)| r.schema)
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_examples_validate_and_a_stray_key_does_not() {
        let doc = document().to_value();
        for (name, v) in examples()
            .into_iter()
            .chain(crate::dbv0038::examples())
            .chain(crate::v0044::examples())
        {
            validate(&doc, name, &v.to_value()).unwrap();
        }
        let mut bad = examples()[0].1.to_value();
        bad["stray"] = serde_json::json!(1);
        assert!(validate(&doc, examples()[0].0, &bad).is_err());
    }

    #[test]
    fn watch_events_validate_against_their_schema() {
        let doc = document().to_value();
        for e in crate::watch::examples() {
            validate(&doc, "muster_v1_watch_event", &e.to_value()).unwrap();
        }
        let op = &doc["paths"][crate::watch::PATH]["get"];
        assert!(op["responses"]["200"]["content"]["text/event-stream"].is_object());
        let names: Vec<&str> = op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        for q in ["user", "job", "partition", "kinds", "Last-Event-ID"] {
            assert!(names.contains(&q), "{q} in {names:?}");
        }
    }

    #[test]
    fn every_route_is_in_the_document_and_every_schema_it_names() {
        let doc = document().to_value();
        for r in all_routes() {
            let op = &doc["paths"][r.path][r.method.to_ascii_lowercase()];
            assert_eq!(op["operationId"], r.op, "{} {}", r.method, r.path);
            if !r.schema.is_empty() {
                assert!(
                    doc["components"]["schemas"].get(r.schema).is_some(),
                    "{}",
                    r.schema
                );
            }
        }
    }
}
